package docstore
