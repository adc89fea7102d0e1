# unit tests: samsactl (what needs no server)
check_PROGRAMS += tests/unit/samsactl_test
TESTS += tests/unit/samsactl_test

tests_unit_samsactl_test_SOURCES = tests/unit/samsactl_test.c \
	tools/samsactl/opts.c tools/samsactl/client.c tools/samsactl/linereader.c \
	tools/samsactl/partitioner.c tools/samsactl/topics.c tools/samsactl/produce.c \
	tools/samsactl/consume.c tools/samsactl/cluster.c tools/samsactl/quorum.c \
	tools/samsactl/groups.c tools/samsactl/sasl.c tools/samsactl/users.c \
	tools/samsactl/coordinator.c tools/samsactl/table.c tools/samsactl/transactions.c \
	tools/samsactl/tls.c tools/samsactl/configs.c tools/samsactl/logdirs.c
tests_unit_samsactl_test_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tools/samsactl
tests_unit_samsactl_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_samsactl_test_LDADD = $(UNIT_LIBS)
