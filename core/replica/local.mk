core_libsamsacore_a_SOURCES += \
	core/replica/partition.c core/replica/partition.h
