from tests.security.conftest import jwt_server  # noqa: F401  (the JWT-mode server fixture)
