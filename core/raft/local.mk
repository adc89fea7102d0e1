# core/raft: KRaft as an I/O-free state machine, its log interface, an
# in-memory log for the simulation, and the message codec glue.
core_libsamsacore_a_SOURCES += \
	core/raft/raft.c core/raft/raft.h \
	core/raft/raft_log.h \
	core/raft/raft_msg.c core/raft/raft_msg.h \
	core/raft/epoch_cache.c core/raft/epoch_cache.h \
	core/raft/memlog.c core/raft/memlog.h
