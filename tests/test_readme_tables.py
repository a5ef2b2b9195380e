"""Every README results table equals the table rendered from the JSON it cites."""

from benchmarks import readme_tables


def test_every_readme_table_has_a_renderer_and_matches_its_json():
    text = readme_tables.README.read_text()
    names = readme_tables.blocks(text)
    assert sorted(names) == sorted(readme_tables.TABLES), names
    _, changed = readme_tables.render(text)
    assert changed == [], (
        f"README tables differ from their JSON: {changed}; run `python -m benchmarks.readme_tables`"
    )


def test_a_changed_number_is_caught():
    text = readme_tables.README.read_text()
    tampered = text.replace("| N = 5 |", "| N = 6 |", 1)
    assert tampered != text
    _, changed = readme_tables.render(tampered)
    assert changed == ["dining_throughput"]
