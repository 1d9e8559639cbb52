"""The CLI tables' column widths (:mod:`jobqueues.cli.column_widths`): what must stay whole is never given less,
and the spare width goes to the columns left to right. GIVEN/WHEN/THEN, pure."""

from __future__ import annotations

from jobqueues.cli.column_widths import FOLD_LEAST, borders, folds, least_width, whole, widths, words

HEADERS = ["job type", "in flight", "body"]
ROWS = [["Prod-Billing/Invoices (FIFO)", "1,200 (1% of quota)", "x" * 50], ["S/J", "0", "{}"]]
PARTS = [words, words, folds]


def test_the_least_width_keeps_each_word_figure_and_header_word_whole() -> None:
    # THEN a name's longest word, a header's (over the quota share's), a body's fold, and the box
    least = [len("Prod-Billing/Invoices"), len("flight"), FOLD_LEAST]
    assert least_width(HEADERS, ROWS, PARTS) == sum(least) + borders(3)
    # AND a whole cell is its whole length
    assert least_width(["id"], [["0f8fad5b-d9cb-469f-a165-70867728950e"]], [whole]) == 36 + borders(1)


def test_the_spare_width_goes_left_to_right_and_none_is_given_less_than_its_least() -> None:
    least = [21, 6, FOLD_LEAST]
    # WHEN there is no spare width, THEN each column gets its least
    assert widths(HEADERS, ROWS, PARTS, least_width(HEADERS, ROWS, PARTS)) == least
    # WHEN there is some, THEN the first column gets what it needs on one line first
    assert widths(HEADERS, ROWS, PARTS, least_width(HEADERS, ROWS, PARTS) + 10) == [28, 9, FOLD_LEAST]
    # WHEN the width is not bounded, THEN every column is as wide as its widest cell or header
    assert widths(HEADERS, ROWS, PARTS, None) == [28, 19, 50]
    # WHEN the width is less than the least, THEN still the least (the caller shows the rows another way)
    assert widths(HEADERS, ROWS, PARTS, 10) == least
