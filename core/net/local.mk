# core/net
