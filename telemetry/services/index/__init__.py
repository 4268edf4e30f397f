"""Index: archives into the session index, the content index and back out."""
