"""The rules, as services: each flushes and never commits; the page or command above commits."""
