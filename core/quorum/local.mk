# core/quorum: the KRaft node on its own thread and loop, the metadata
# log on disk (plog-backed raft_log, snapshots), the quorum-state file,
# and the transport (kclient out, controller-listener jobs in).
core_libsamsacore_a_SOURCES += \
	core/quorum/quorum.c core/quorum/quorum.h \
	core/quorum/rlog.c core/quorum/rlog.h \
	core/quorum/qstate.c core/quorum/qstate.h
