"""Front-ends: argument parsing only, mapped onto the library."""
