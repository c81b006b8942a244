"""The parts of a report, each a typed record with `to_dict` (its JSON form, schemas/report.schema.json) and
`from_dict` (that form read back): `values` (how figures and text are written and read), `judged` (what a
judged rule or comparison carries beside its figures), `gains`, `placement` (where the nodes ran, the mobile
providers' coverage and the platform a runtime set ran on), `runs` (the validation command and the shard),
`answers` (the answers that changed under a graph, each case's decoded reference answers) and `changes` (what
changed since a base report). `checker.reports.model` puts them together.
"""
