"""The `longshore` command line tool."""
