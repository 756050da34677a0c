"""`manage.py create_api_token USERNAME`: print the user's API token (created if missing)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from sherlock.core.audit import audit


class Command(BaseCommand):
    help = (
        "Print USERNAME's API token for `Authorization: Token <key>`, creating it if needed; "
        "--rotate replaces an existing one."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--rotate", action="store_true", help="delete the existing token and issue a new one"
        )

    def handle(self, *args, username, rotate, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if not user.is_active:
            raise CommandError(f"{username} is inactive")
        with transaction.atomic():
            if rotate:
                Token.objects.filter(user=user).delete()
            token, created = Token.objects.get_or_create(user=user)
            if created:
                # A token is a credential: who got one, and when, belongs in the audit log (the
                # key itself does not).
                audit(
                    "auth.token.create",
                    target=user,
                    after={"rotated": rotate, "key_prefix": token.key[:6]},
                    reason="manage.py create_api_token",
                )
        self.stdout.write(token.key)
