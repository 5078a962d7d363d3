"""judges/rules/locate: a value found in a text after the rules judge's normalisation, at the
characters it covers in the text (issue #35 item 3)."""
from factjudge.judges.rules.locate import MAX_CHARS, TextIndex

TEXT = "Dr. MARÍA LÓPEZ gave (aspirin) 1,200 mg; later aspirin again. 😀 Ørsted & Co. paid $3.5m."


def found(value, text=TEXT, **kw):
    return [text[a:b] for a, b in TextIndex(text, **kw).find(value)]


def test_case_accents_and_punctuation_are_normalised_as_the_rules_judge_does():
    assert found("Maria Lopez") == ["MARÍA LÓPEZ"]
    assert found("1200 mg") == ["1,200 mg"]           # thousands comma
    assert found("orsted and co") == ["Ørsted & Co"]   # ø, &, the trailing dot trimmed


def test_a_value_found_twice_gives_both_places_and_the_punctuation_around_a_word_is_not_marked():
    assert found("aspirin") == ["aspirin", "aspirin"]


def test_a_value_not_in_the_text_nor_across_a_gap_is_not_found():
    assert found("ibuprofen") == [] and found("lopez aspirin") == [] and found("") == []


def test_offsets_are_code_points_after_an_emoji():
    index = TextIndex(TEXT)
    (a, b), = index.find("$3.5m")
    assert TEXT[a:b] == "$3.5m" and a == TEXT.index("$3.5m")


def test_company_suffixes_follow_the_config():
    assert found("Orsted Co.", ignore_company_suffixes=True) == ["Ørsted"]
    assert found("Orsted Co.", ignore_company_suffixes=False) == []  # "&" stands between


def test_the_search_is_bounded_to_the_beginning_of_a_long_text():
    text = "x " * (MAX_CHARS // 2) + "aspirin"
    assert found("aspirin", text) == []


def test_figures_are_read_with_the_configs_decimal_comma():
    """The source check ignored decimal_separator: a predicted 1234.5 was "not found" in a German
    text's "1.234,5", and 0.5 not in "0,5"; with a decimal point a text's "1,5" is no 1.5."""
    text = "Umsatz 1.234,5 Mio. EUR; 2.500 Mitarbeiter; Anteil 0,5 %; Version 1.2.3"
    for value, shown in (("1234.5", "1.234,5"), ("1.234,5", "1.234,5"), ("2500", "2.500"), ("0.5", "0,5"),
                         ("0,5", "0,5"), ("1.2.3", "1.2.3")):
        assert found(value, text, decimal_separator=",") == [shown], value
    assert found("1234.5", text) == [] and found("0.5", text) == [] and found("2500", text) == []
    assert found("1.234,5", text) == ["1.234,5"]  # as written: found whatever the separator
