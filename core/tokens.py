"""Bearer credentials: JWT verification (and minting), personal access tokens, the security key.

JWT rules: the algorithm must be on ``JWT_ALGORITHMS`` (never ``none``); a shared secret only
verifies HS* tokens and a public key only RS/PS/ES/EdDSA ones, so an attacker cannot present
an HS256 token signed with our public key. Any configured key may verify (keys rotate).
``exp`` is required; ``exp``, ``nbf`` and ``iat`` are checked with ``JWT_LEEWAY_SECONDS``; the
audience is checked unless ``JWT_VERIFY_AUDIENCE=false``.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import jwt
from django.conf import settings
from django.utils import timezone

PAT_PREFIX = "agno_pat_"
HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RESERVED_SUBJECT_PREFIXES = ("sa:", "__oauth__:")
# "__guest__": the owner of what anonymous guests write where ownerless rows are shared
# (core.auth.GUEST_OWNER): no token may act as it.
RESERVED_SUBJECTS = ("__scheduler__", "__guest__")


class TokenError(Exception):
    """A credential was presented and refused; the message is the 401 detail."""


@dataclass(frozen=True)
class VerificationKey:
    key: Any
    algorithms: tuple[str, ...]
    kid: str | None = None


def _asymmetric_algorithms(key: Any) -> tuple[str, ...]:
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    if isinstance(key, rsa.RSAPublicKey):
        return ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
    if isinstance(key, ec.EllipticCurvePublicKey):
        return ("ES256", "ES384", "ES512", "ES256K")
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return ("EdDSA",)
    raise ValueError(f"unsupported public key type {type(key).__name__}")


def _static_key(text: str) -> VerificationKey:
    allowed = tuple(settings.JWT_ALGORITHMS)
    if text.lstrip().startswith("-----BEGIN"):
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        public = load_pem_public_key(text.replace("\\n", "\n").encode())
        return VerificationKey(public, tuple(a for a in _asymmetric_algorithms(public) if a in allowed))
    return VerificationKey(text, tuple(a for a in HMAC_ALGORITHMS if a in allowed))


@lru_cache(maxsize=4)
def _load_keys(static: tuple[str, ...], jwks_file: str | None, allowed: tuple[str, ...]) -> tuple[VerificationKey, ...]:
    keys: list[VerificationKey] = []
    if jwks_file:
        document = json.loads(Path(jwks_file).read_text())
        for entry in document.get("keys", []):
            jwk = jwt.PyJWK(entry)
            if entry.get("kty") == "oct":
                algorithms = tuple(a for a in HMAC_ALGORITHMS if a in allowed)
            else:
                algorithms = tuple(a for a in _asymmetric_algorithms(jwk.key) if a in allowed)
            if entry.get("alg"):
                algorithms = tuple(a for a in algorithms if a == entry["alg"])
            keys.append(VerificationKey(jwk.key, algorithms, entry.get("kid")))
    keys += [_static_key(text) for text in static]
    return tuple(keys)


def verification_keys() -> tuple[VerificationKey, ...]:
    return _load_keys(tuple(settings.JWT_VERIFICATION_KEYS), settings.JWT_JWKS_FILE, tuple(settings.JWT_ALGORITHMS))


def verify_jwt(token: str) -> dict[str, Any]:
    """The token's claims, or TokenError with AgentOS's 401 detail."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise TokenError(f"Invalid token: {exc}") from None
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or algorithm.lower() == "none" or algorithm not in settings.JWT_ALGORITHMS:
        raise TokenError("Invalid token: The specified alg value is not allowed")
    kid = header.get("kid")
    candidates = [key for key in verification_keys() if algorithm in key.algorithms and (key.kid is None or kid is None or key.kid == kid)]
    if not candidates:
        raise TokenError("Invalid token: Signature verification failed")
    options = {"require": ["exp"], "verify_aud": settings.JWT_VERIFY_AUDIENCE}
    for key in candidates:
        try:
            return jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=settings.JWT_AUDIENCE if settings.JWT_VERIFY_AUDIENCE else None,
                issuer=settings.JWT_ISSUER,
                leeway=settings.JWT_LEEWAY_SECONDS,
                options=options,
            )
        except jwt.InvalidSignatureError:
            continue  # another configured key may have signed it (rotation)
        except jwt.ExpiredSignatureError:
            raise TokenError("Token has expired") from None
        except jwt.InvalidAudienceError:
            raise TokenError("Invalid token audience - token not valid for this AgentOS instance") from None
        except jwt.PyJWTError as exc:
            raise TokenError(f"Invalid token: {exc}") from None
    raise TokenError("Invalid token: Signature verification failed")


def check_subject(subject: Any) -> str:
    if not isinstance(subject, str) or not subject.strip():
        raise TokenError("Invalid token subject")
    if subject.startswith(RESERVED_SUBJECT_PREFIXES) or subject in RESERVED_SUBJECTS:
        raise TokenError("Invalid token subject")
    return subject


def issue_jwt(*, user_id: str, scopes: list[str], ttl_seconds: int, extra: dict[str, Any] | None = None) -> str:
    """Mint a token this server accepts (``manage.py issue_token``)."""
    key = settings.JWT_SIGNING_KEY or next(iter(settings.JWT_VERIFICATION_KEYS), None)
    if not key:
        raise TokenError("No signing key: set JWT_SIGNING_KEY (or JWT_VERIFICATION_KEYS with a shared secret)")
    if key.lstrip().startswith("-----BEGIN"):
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        private = load_pem_private_key(key.replace("\\n", "\n").encode(), password=None)
        algorithm = "RS256" if isinstance(private, rsa.RSAPrivateKey) else "ES256" if isinstance(private, ec.EllipticCurvePrivateKey) else "EdDSA"
        signing_key: Any = private
    else:
        algorithm, signing_key = "HS256", key
    now = int(time.time())
    claims: dict[str, Any] = {"sub": user_id, settings.JWT_SCOPES_CLAIM: list(scopes), "iat": now, "nbf": now, "exp": now + ttl_seconds}
    if settings.JWT_USER_ID_CLAIM != "sub":
        claims[settings.JWT_USER_ID_CLAIM] = user_id
    if settings.JWT_VERIFY_AUDIENCE:
        claims["aud"] = settings.JWT_AUDIENCE
    if settings.JWT_ISSUER:
        claims["iss"] = settings.JWT_ISSUER
    claims.update(extra or {})
    return jwt.encode(claims, signing_key, algorithm=algorithm)


def security_key_matches(presented: str) -> bool:
    expected = settings.OS_SECURITY_KEY or ""
    return bool(expected) and hmac.compare_digest(presented.encode(), expected.encode())


# ---- personal access tokens ------------------------------------------------------------------


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token_secret() -> str:
    return PAT_PREFIX + secrets.token_urlsafe(32)


# A token's last_used_at is refreshed at most this often (not a write per request).
LAST_USED_RESOLUTION = timedelta(minutes=5)


def access_token_lookup(token: str):
    """The usable AccessToken for ``token``, or TokenError."""
    from .models import AccessToken

    row = AccessToken.objects.unscoped("looked up by the hash of the presented secret").filter(token_hash=token_hash(token)).first()
    if row is None or not row.is_usable():
        raise TokenError("Invalid authentication token")
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION:
        AccessToken.objects.unscoped("keyed by id").filter(pk=row.pk).update(last_used_at=now)
    return row
