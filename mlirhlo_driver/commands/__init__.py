"""What each command does, in parameters: the front-ends (cli/) parse and call these."""
