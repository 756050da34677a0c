"""Existing plaintext API tokens (DRF's `authtoken_token`) become hashed API keys.

Each token keeps working, with the same header, as a key named "converted token" that expires
`SHERLOCK_API_KEY_DAYS` after this migration; its plaintext row is then deleted, so no secret
is left at rest. A token whose first eight characters (the key's prefix) clash with another's
cannot be told apart by prefix, so it is revoked instead (deleted, not converted). The migration
says what it did on migrate's output. DRF's authtoken app is no longer installed: its table is
read with plain SQL when it exists, and left empty.
"""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.utils import timezone
from rest_framework_api_key.crypto import KeyGenerator, concatenate

TABLE = "authtoken_token"
PREFIX_LENGTH = 8


def convert_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if TABLE not in connection.introspection.table_names():
        return
    api_key_model = apps.get_model("governance", "APIKey")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id FROM {TABLE} ORDER BY created")  # noqa: S608
        rows = cursor.fetchall()
    if not rows:
        return
    generator = KeyGenerator()
    expires = timezone.now() + timedelta(days=settings.SHERLOCK_API_KEY_DAYS)
    taken = set(api_key_model.objects.values_list("prefix", flat=True))
    converted, revoked = [], []
    for key, user_id in rows:
        prefix = key[:PREFIX_LENGTH]
        if prefix in taken:
            revoked.append(user_id)
            continue
        taken.add(prefix)
        hashed = generator.hash(key)
        converted.append(
            api_key_model(
                id=concatenate(prefix, hashed),
                prefix=prefix,
                hashed_key=hashed,
                name="converted token",
                user_id=user_id,
                expiry_date=expires,
            )
        )
    api_key_model.objects.bulk_create(converted)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE}")  # noqa: S608
    print(
        f"\n  API tokens: {len(converted)} plaintext token(s) converted to hashed keys, which keep "
        f"working until {expires:%Y-%m-%d} (SHERLOCK_API_KEY_DAYS); {len(revoked)} revoked "
        f"(prefix clash: issue new keys with manage.py create_api_token); the plaintext rows "
        f"of {TABLE} are deleted."
    )


class Migration(migrations.Migration):
    dependencies = [("governance", "0007_api_keys")]

    # Irreversible by nature (the plaintext is gone); unapplying it leaves the keys as they are.
    operations = [migrations.RunPython(convert_tokens, migrations.RunPython.noop)]
