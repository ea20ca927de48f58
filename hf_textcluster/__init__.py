"""hf_textcluster."""
