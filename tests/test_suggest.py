from rate.suggest import closest, plural, unknown_name_message


def test_closest_finds_near_miss():
    assert closest("kl_coeff", ["lr", "kl_coef", "seed"]) == "kl_coef"


def test_closest_returns_none_when_nothing_is_close():
    assert closest("batch_size", ["lr", "seed"]) is None
    assert closest("anything", []) is None


def test_message_with_suggestion_and_location():
    msg = unknown_name_message("key", "kl_coeff", ["a", "kl_coef", "b"], where="config.json")
    assert msg == (
        "config.json: unknown key 'kl_coeff'; did you mean 'kl_coef'? Valid keys: a, kl_coef, b"
    )


def test_message_without_suggestion_or_location():
    msg = unknown_name_message("backend", "zzz", ["openai", "hf", "openai"])
    assert msg == "unknown backend 'zzz'. Valid backends: openai, hf"


def test_message_with_no_candidates():
    assert (
        unknown_name_message("template", "x", []) == "unknown template 'x'. Valid templates: (none)"
    )


def test_plurals_are_english():
    """main said 'Valid familys' (RL config family_weights)."""
    assert unknown_name_message("family", "dun", ["dune"]).endswith("Valid families: dune")
    assert (
        plural("key") == "keys" and plural("class") == "classes" and plural("backend") == "backends"
    )
