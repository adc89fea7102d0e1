# unit tests: util
