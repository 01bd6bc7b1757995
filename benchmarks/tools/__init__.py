"""Release tools beside the studies: the base model's packaging, the public-text corpus builder and the
generated documentation pages."""
