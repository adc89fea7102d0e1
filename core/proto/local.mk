# core/proto
