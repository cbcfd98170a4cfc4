"""The report's summary shows a record to its printed digits.

CP26's record 2.6359830853 (11 digits) was shown as "2.635983085", the same text as a best score of
2.6359830849 that does not beat it, next to "beats the record? no".
"""

from __future__ import annotations

from discoverygym.report.html import _table


def test_floats_keep_enough_digits_to_tell_a_best_from_the_record():
    html = _table(["", ""], [["best score", 2.635983084917583], ["published record", 2.6359830853]])
    assert "<td>2.6359830853</td>" in html
    assert "<td>2.635983085</td>" not in html
