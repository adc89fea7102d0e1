core_libsamsacore_a_SOURCES += \
	core/replica/partition.c core/replica/partition.h
core_libsamsacore_a_SOURCES += \
	core/replica/registry.c
