/* Feature flags in ApiVersions (v3+: SupportedFeatures,
 * FinalizedFeaturesEpoch, FinalizedFeatures), as a KRaft node of Kafka
 * answers them. */
#ifndef SAMSA_API_FEATURES_H
#define SAMSA_API_FEATURES_H

struct request;
struct api_versions_response_s;

/* Fills the feature fields of resp (arrays from req->arena) from this
 * node's supported levels and its current metadata image. */
void api_versions_add_features(struct request *req, struct api_versions_response_s *resp);

#endif
