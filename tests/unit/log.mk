# unit tests: log
