(function () {
  "use strict";
  // The filters of compare.html and agree.html. A <select data-filter="KEY"> keeps the rows of the
  // table marked data-filtered whose data-KEY equals its value ("" keeps all); a checkbox
  // data-filter="KEY" data-hide="VALUE" hides, when ticked, the rows whose data-KEY is VALUE.
  // page.html#KEY=VALUE&... opens with those filters set (a checkbox: KEY=1).
  var rows = document.querySelectorAll("table[data-filtered] tbody tr");
  var controls = Array.from(document.querySelectorAll("[data-filter]"));
  var shown = document.getElementById("shown");
  function keeps(row, c) {
    var value = row.dataset[c.dataset.filter];
    if (c.type === "checkbox") { return !c.checked || value !== c.dataset.hide; }
    return !c.value || value === c.value;
  }
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var ok = controls.every(function (c) { return keeps(row, c); });
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  var params = new URLSearchParams(location.hash.slice(1));
  controls.forEach(function (c) {
    var key = c.dataset.filter;
    if (params.has(key)) {
      if (c.type === "checkbox") { c.checked = params.get(key) === "1"; } else { c.value = params.get(key); }
    }
    c.addEventListener("change", apply);
  });
  apply();
})();
