# core/controller
