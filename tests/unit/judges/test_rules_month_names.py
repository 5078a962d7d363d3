"""Rules judge: dates and months written with a month name in German, French, Spanish, Italian,
Dutch or Portuguese (``15. Juni 2024``, ``1er mars 2024``, ``1 de marzo de 2024``) are the dates
they are, as ``March 1, 2024`` is; they were texts, FN against the same date in ISO form. Each test
of a form failed before; the controls keep names and words that are also months (``Mai``,
``Mars``, ``Juni``, ``Set``) texts outside a date's shape, and different dates apart."""
import pytest
from evalkit import rules_link

from factjudge import JudgeConfig
from factjudge.judges.rules.normalize import Period, Reading, Text, normalize_value, parse_period
from factjudge.judges.rules.proof import pair_proof

#: The twelve month names of each language, January first.
MONTHS = {
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
}
#: How each language writes the 15th of a month (``{}`` the month's name).
DAY_FORMS = {"de": "15. {} 2024", "fr": "15 {} 2024", "es": "15 de {} de 2024", "it": "15 {} 2024",
             "nl": "15 {} 2024", "pt": "15 de {} de 2024"}
LANGUAGE_MONTHS = [(lang, n, name) for lang, names in MONTHS.items()
                   for n, name in enumerate(names.split(), start=1)]


@pytest.mark.parametrize(("lang", "n", "name"), LANGUAGE_MONTHS)
def test_every_month_of_every_language_is_read_with_its_day_and_alone(lang, n, name):
    assert parse_period(DAY_FORMS[lang].format(name)) == f"2024-{n:02d}-15"
    assert parse_period(f"{name} 2024") == f"2024-{n:02d}"


@pytest.mark.parametrize(("text", "key"), [
    ("15. Juni 2024", "2024-06-15"), ("15 Juni 2024", "2024-06-15"), ("1. Jänner 2024", "2024-01-01"),
    ("1er mars 2024", "2024-03-01"), ("15 juin 2024", "2024-06-15"), ("15 aout 2024", "2024-08-15"),
    ("1 de marzo de 2024", "2024-03-01"), ("1º de marzo de 2024", "2024-03-01"),
    ("1 de marzo del 2024", "2024-03-01"), ("1 setiembre 2024", "2024-09-01"),
    ("1 marzo 2024", "2024-03-01"), ("1 maart 2024", "2024-03-01"),
    ("1 de março de 2024", "2024-03-01"), ("1° de março de 2024", "2024-03-01"),
    ("1 de marco de 2024", "2024-03-01"), ("marzo de 2024", "2024-03"),
    ("15-juin-2024", "2024-06-15"), ("30_März_2007", "2007-03-30"),
])
def test_dates_with_a_month_name_in_another_language(text, key):
    assert parse_period(text) == key


@pytest.mark.parametrize(("text", "key"), [
    ("janv. 2024", "2024-01"), ("1 janv. 2024", "2024-01-01"), ("1 févr. 2024", "2024-02-01"),
    ("1 fevr 2024", "2024-02-01"), ("5 avr. 2024", "2024-04-05"), ("1 juil. 2024", "2024-07-01"),
    ("1 déc. 2024", "2024-12-01"), ("1. Mär. 2024", "2024-03-01"), ("1. Okt. 2024", "2024-10-01"),
    ("1. Dez. 2024", "2024-12-01"), ("1 ene. 2024", "2024-01-01"), ("1 dic 2024", "2024-12-01"),
    ("1 gen. 2024", "2024-01-01"), ("1 mag 2024", "2024-05-01"), ("1 giu. 2024", "2024-06-01"),
    ("1 lug. 2024", "2024-07-01"), ("1 ott. 2024", "2024-10-01"), ("1 mrt. 2024", "2024-03-01"),
    ("1 fev. 2024", "2024-02-01"), ("1 set. 2024", "2024-09-01"), ("1 out 2024", "2024-10-01"),
    ("set. 2024", "2024-09"), ("out. 2024", "2024-10"),
])
def test_short_forms_with_and_without_their_dot(text, key):
    assert parse_period(text) == key


@pytest.mark.parametrize(("text", "key"), [
    ("15. JUNI 2024", "2024-06-15"), ("1ER MARS 2024", "2024-03-01"), ("MÄRZ 2024", "2024-03"),
    ("1 De Marzo De 2024", "2024-03-01"), ("JANV. 2024", "2024-01"),
])
def test_case_does_not_matter(text, key):
    assert parse_period(text) == key


@pytest.mark.parametrize(("written", "iso"), [
    ("15. Juni 2024", "2024-06-15"), ("1er mars 2024", "2024-03-01"), ("1 de marzo de 2024", "2024-03-01"),
    ("1 marzo 2024", "2024-03-01"), ("1 maart 2024", "2024-03-01"), ("1 de março de 2024", "2024-03-01"),
    ("15 juin 2024", "2024-06-15"), ("Juni 2024", "2024-06"), ("janv. 2024", "2024-01"),
])
def test_the_judge_links_a_date_in_another_language_to_its_iso_form(written, iso):
    """Each pair was FN + FP: the written date was a text, the ISO one a date."""
    assert rules_link({"date": written}, {"date": iso})
    assert rules_link({"date": iso}, {"date": written})


def test_two_languages_writing_one_date_are_equal_and_other_dates_are_not():
    assert rules_link({"date": "15. Juni 2024"}, {"date": "15 juin 2024"})
    assert rules_link({"date": "1 de março de 2024"}, {"date": "March 1, 2024"})
    assert rules_link({"date": "Juni 2024"}, {"date": "June 2024"})
    # controls: one letter apart (Juni / Juli), another day, another year, a month against a day
    assert not rules_link({"date": "15. Juni 2024"}, {"date": "15. Juli 2024"})
    assert not rules_link({"date": "15. Juni 2024"}, {"date": "2024-06-16"})
    assert not rules_link({"date": "1er mars 2024"}, {"date": "1er mai 2024"})
    assert not rules_link({"date": "Juni 2024"}, {"date": "Juni 2025"})
    assert not rules_link({"date": "Juni 2024"}, {"date": "2024-07"})
    assert not rules_link({"date": "Juni 2024"}, {"date": "2024-06-15"})


@pytest.mark.parametrize("order", ["MDY", "DMY", "YMD"])
def test_a_month_name_is_never_ambiguous_whatever_the_date_order(order):
    reading = Reading(date_order=order)
    assert parse_period("3 janvier 2024", reading=reading) == "2024-01-03"
    assert parse_period("1 mars 2024", reading=reading) == "2024-03-01"


def test_the_date_order_still_decides_the_numeric_date_it_is_compared_with():
    """03/01/2024 is March 1 month first and January 3 day first; the named date is either."""
    assert rules_link({"date": "1 mars 2024"}, {"date": "03/01/2024"})
    assert not rules_link({"date": "3 janvier 2024"}, {"date": "03/01/2024"})
    assert rules_link({"date": "3 janvier 2024"}, {"date": "03/01/2024"}, {"date_order": "DMY"})
    assert not rules_link({"date": "1 mars 2024"}, {"date": "03/01/2024"}, {"date_order": "DMY"})


@pytest.mark.parametrize("text", [
    "Mai Nguyen", "Mars rover", "Juni Consulting", "Mars 2020 rover", "Juni Consulting 2024",
    "Mai Nguyen 2024", "Marco Rossi 2024", "15 Mars missions 2024",
    # short forms that are words: a month only with a day or their dot
    "Set 2024", "Gen 2024", "Out 2024", "Mag 2024", "Ago 2024",
    # nor after an English ordinal: a product's generation
    "5th gen 2024", "2nd set 2024",
    # no such day
    "31. Februar 2024", "30 février 2024",
])
def test_names_and_words_outside_a_date_shape_stay_texts(text):
    assert parse_period(text) is None
    assert isinstance(normalize_value(text), Text)


def test_a_name_that_is_a_month_word_is_still_compared_as_a_name():
    assert rules_link({"name": "Mai Nguyen"}, {"name": "Mai Nguyen"})
    assert not rules_link({"name": "Mai Nguyen"}, {"name": "May Nguyen"})
    assert not rules_link({"name": "Mars rover"}, {"name": "March rover"})


def test_a_named_date_is_a_period_value():
    value = normalize_value("15. Juni 2024")
    assert isinstance(value, Period) and value.key == "2024-06-15"


CONFIG = JudgeConfig()


def _proof(a: str, b: str):
    return pair_proof({"fact_type": "t", "date": a}, {"fact_type": "t", "date": b}, ["date"], CONFIG)


@pytest.mark.parametrize(("a", "b"), [
    ("15. Juni 2024", "2024-06-16"), ("1er mars 2024", "2024-03-02"), ("1 de marzo de 2024", "1 de abril de 2024"),
    ("Juni 2024", "2024-07"), ("janv. 2024", "févr. 2024"),
])
def test_a_date_in_another_language_proves_a_difference(a, b):
    """These were texts, and a text proves nothing: the LLM could link them."""
    proof = _proof(a, b)
    assert proof is not None and proof.kind == "date"


@pytest.mark.parametrize(("a", "b"), [
    ("15. Juni 2024", "2024-06-15"), ("15. Juni 2024", "15 juin 2024"), ("1 de março de 2024", "March 1, 2024"),
    ("Juni 2024", "2024-06"),
    # a month against a day of it, and a text against a date: nothing proved
    ("Juni 2024", "2024-06-16"), ("Mars 2020 rover", "2020-03-01"),
])
def test_the_same_date_or_another_kind_proves_nothing(a, b):
    assert _proof(a, b) is None
