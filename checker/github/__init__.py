"""The GitHub integration: the event, the sticky comment, the job summary, annotations and step outputs.

It only publishes what the renderers made from a report; it never runs a check. `command` registers
`checker github ...`; `publish` is the action's behaviour after verification.
"""
