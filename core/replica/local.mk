core_libsamsacore_a_SOURCES += \
	core/replica/partition.c core/replica/partition.h
core_libsamsacore_a_SOURCES += \
	core/replica/registry.c
core_libsamsacore_a_SOURCES += \
	core/replica/repl.c core/replica/repl.h
core_libsamsacore_a_SOURCES += \
	core/replica/fetcher.c core/replica/fetcher.h
