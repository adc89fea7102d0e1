# core/controller: metadata log, images, admin operations
core_libsamsacore_a_SOURCES += \
	core/controller/controller.c core/controller/controller.h core/controller/controller_internal.h \
	core/controller/brokers.c core/controller/snapshot.c core/controller/replication.c \
	core/controller/producer_ids.c core/controller/features.c core/controller/scram.c \
	core/controller/acls.c core/controller/quotas.c \
	core/controller/pid_manager.c core/controller/pid_manager.h core/controller/balance.c \
	core/controller/format.c core/controller/format.h \
	core/controller/image.c core/controller/image.h core/controller/image_build.h
# The topic admin, Metadata and DescribeCluster handlers (core/api), listed
# here by their author so that core/api/local.mk stays the lead's.
core_libsamsacore_a_SOURCES += \
	core/api/metadata.c core/api/topics.c core/api/cluster.c \
	core/api/quorum.c core/api/forward.c core/api/forward.h core/api/envelope.c core/api/envelope.h \
	core/api/controlplane.c core/api/features.c core/api/features.h
# InitProducerId, served from the broker's producer-id blocks (pid_manager.c)
core_libsamsacore_a_SOURCES += core/api/init_producer_id.c
