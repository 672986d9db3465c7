"""`rate results`: every effect file as one table (CSV, Markdown, JSON), and the record of a
pipeline run that names every file its four stages wrote."""

# The table's formats; here, in the light package module, for the parser too.
FORMATS = ("markdown", "csv", "json")
