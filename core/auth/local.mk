# core/auth
