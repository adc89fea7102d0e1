# core/api
