// The DOM helpers the pages' scripts share (report.js, review.js), inlined by base.html.j2 before
// the page's own script. A value only ever goes in with textContent: a fact is always text.
var factjudgeDom = {
  byId: function (id) { return document.getElementById(id); },
  el: function (tag, cls, text) {
    var x = document.createElement(tag);
    if (cls) { x.className = cls; }
    if (text !== undefined && text !== null) { x.textContent = text; }
    return x;
  },
  valueText: function (v) { return typeof v === "string" ? v : JSON.stringify(v); }
};
