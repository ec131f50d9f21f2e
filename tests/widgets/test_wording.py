from widgets.wording import count_of


def test_counts_agree_in_number():
    assert count_of(1, "example") == "1 example"
    assert count_of(0, "example") == "0 examples"
    assert count_of(2_733, "example") == "2,733 examples"
    assert count_of(1, "match", "matches") == "1 match" and count_of(2, "match", "matches") == "2 matches"
