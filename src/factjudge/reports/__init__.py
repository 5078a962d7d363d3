"""What a person reads.

- ``rows``: which facts a report lists (worst documents first, closest facts, changed facts);
- ``text``: the words report.md and report.html share; ``format``: how numbers are shown;
- ``markdown``: report.md and compare.md;
- ``html``: report.html and compare.html (and agree.html's renderer) from ``templates/``, with
  the stylesheet and scripts of ``static/`` inlined; the only module that imports jinja2;
- ``docview``: the data report.html's document view embeds;
- ``review``: review.html, where a person reviews the judge's decisions (its queue, most
  informative first);
- ``facts_csv``: facts.csv.
"""
