"""The report of `checker verify`, and everything done with one afterwards.

`model` holds the typed report and its JSON form both ways; `files` reads (bounded, checked against
schemas/report.schema.json) and writes report files; `merge` joins the reports of shard and runtime jobs;
`diff` says what changed between two; `options` holds the options of every command that writes a report;
`command` is `checker report merge|diff`. The renderers and the GitHub code import this package; nothing
here imports them or the command line.
"""
