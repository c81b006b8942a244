"""Signed bundles: `checker sign` signs a bundle's release files in OpenSSF model-signing's format (an in-toto
statement in a DSSE envelope, in a Sigstore bundle written to `bundle.sig`), and `checker verify
--require-signature` checks that signature against a trusted key or certificate chain, naming each file that was
added, removed or changed since signing. `model_signing verify` accepts the same signature.

This package is the signing library and the `checker sign` command; the stages that judge a bundle by its
signature or its attestation are checks like any other (`checks/signature.py`, `checks/attestation.py`).
"""
