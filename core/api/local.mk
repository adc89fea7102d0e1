core_libsamsacore_a_SOURCES += \
	core/api/request.h \
	core/api/dispatch.c core/api/dispatch.h core/api/handlers.h \
	core/api/apiversions.c
core_libsamsacore_a_SOURCES += \
	core/api/fetch_session.c core/api/fetch_session.h \
	core/api/fetch.c core/api/produce.c core/api/listoffsets.c \
	core/api/produce_codec.c core/api/produce_codec.h
# DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
core_libsamsacore_a_SOURCES += core/api/configs.c
# AlterClientQuotas, DescribeClientQuotas and quota enforcement
core_libsamsacore_a_SOURCES += core/api/quotas.c core/api/quota_mgr.c core/api/quota_mgr.h
# unit test of the broker-config path of configs.c (through the controller)
check_PROGRAMS += tests/unit/configs_api_test
TESTS += tests/unit/configs_api_test
tests_unit_configs_api_test_SOURCES = tests/unit/configs_api_test.c
tests_unit_configs_api_test_CFLAGS = $(UNIT_CFLAGS)
tests_unit_configs_api_test_LDADD = $(UNIT_LIBS)
# DeleteRecords (the log start offset; core/log does the work)
core_libsamsacore_a_SOURCES += core/api/deleterecords.c
# DescribeProducers (the producer state is core/log's)
core_libsamsacore_a_SOURCES += core/api/describeproducers.c
core_libsamsacore_a_SOURCES += core/api/offsetforleaderepoch.c
core_libsamsacore_a_SOURCES += core/api/logdirs.c
# WriteTxnMarkers (the partition side of transactions)
core_libsamsacore_a_SOURCES += core/api/txn_markers.c
# DescribeTransactions, ListTransactions (the state is core/coord/txn_coord's)
core_libsamsacore_a_SOURCES += core/api/txn_describe.c
# The group APIs (the group coordinator is core/coord)
core_libsamsacore_a_SOURCES += core/api/groups.c
# SaslHandshake, SaslAuthenticate, Describe/AlterUserScramCredentials
core_libsamsacore_a_SOURCES += core/api/sasl.c
core_libsamsacore_a_SOURCES += core/api/txn.c
# The metrics endpoint's exposition (samsa.metrics.listener)
core_libsamsacore_a_SOURCES += core/api/prometheus.c core/api/prometheus.h
