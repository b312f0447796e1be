"""Platform-wide tables. (Also what makes Django send core's pre_migrate signal, which
creates the pgvector extension: see core.apps.)"""
