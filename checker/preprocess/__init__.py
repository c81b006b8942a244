"""Rebuilding model inputs from application inputs (images, text) with the declared preprocessing."""
