"""The true verdicts of the bundled example (examples/report_*), per direction, by hand."""
GOLD_TRUTH = {"g01": "p01", "g02": "p02", "g03": "p03", "g04": "p04", "g05": None, "g06": "p06",
              "g07": "p07", "g08": "p08", "g09": "p09", "g10": "p10", "g11": None, "g12": "p13",
              "g13": None, "g14": "p15", "g15": "p17", "g16": "p18", "g17": None}
PRED_TRUTH = {"p01": "g01", "p02": "g02", "p03": "g03", "p04": "g04", "p05": None, "p06": "g06",
              "p07": "g07", "p08": "g08", "p09": "g09", "p10": "g10", "p11": "g10", "p12": None,
              "p13": "g12", "p14": None, "p15": "g14", "p16": None, "p17": "g15", "p18": "g16",
              "p19": None}
TRUTH = {**{("gold", k): v for k, v in GOLD_TRUTH.items()},
         **{("predicted", k): v for k, v in PRED_TRUTH.items()}}
