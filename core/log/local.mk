# core/log
