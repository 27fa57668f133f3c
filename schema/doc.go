package schema
