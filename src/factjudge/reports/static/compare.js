(function () {
  "use strict";
  var type = document.getElementById("filter-type");
  var change = document.getElementById("filter-change");
  var doc = document.getElementById("filter-doc");
  var rows = document.querySelectorAll("#changed tbody tr");
  var shown = document.getElementById("shown");
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var ok = (!type.value || row.dataset.type === type.value) &&
               (!change.value || row.dataset.change === change.value) &&
               (!doc.value || row.dataset.doc === doc.value);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  // compare.html#change=broke&type=revenue&doc=D opens with those filters
  var params = new URLSearchParams(location.hash.slice(1));
  [["type", type], ["change", change], ["doc", doc]].forEach(function (p) {
    if (params.has(p[0])) { p[1].value = params.get(p[0]); }
  });
  [type, change, doc].forEach(function (s) { s.addEventListener("change", apply); });
  apply();
})();
