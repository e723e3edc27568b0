"""Generated protocol code (see proto/ and scripts/gen_protos.py)."""
