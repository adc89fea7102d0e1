# Group coordinator: classic groups and committed offsets in
# __consumer_offsets (group.c is the state machine, coord.c the service).
core_libsamsacore_a_SOURCES += \
	core/coord/group.c core/coord/group.h \
	core/coord/records.c core/coord/records.h \
	core/coord/coord.c core/coord/coord.h
