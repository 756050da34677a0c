"""`manage.py create_api_token USERNAME`: issue the user a new API key and print it (once)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from governance.actions.create_api_key import CreateAPIKey
from governance.actions.revoke_api_key import RevokeAPIKey
from governance.models import APIKey
from sherlock.core.errors import ActionError


class Command(BaseCommand):
    help = (
        "Issue USERNAME a new API key for `Authorization: Token <key>` and print it: it is stored "
        "hashed and cannot be shown again. --rotate first revokes the user's active keys."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="manage.py create_api_token", help="the key's name")
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="days until it expires (default SHERLOCK_API_KEY_DAYS, at most "
            "SHERLOCK_API_KEY_MAX_DAYS)",
        )
        parser.add_argument(
            "--rotate", action="store_true", help="revoke the user's active keys first"
        )

    def handle(self, *args, username, name, days, rotate, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        try:
            if rotate:
                for api_key in APIKey.objects.usable().filter(user=user):
                    RevokeAPIKey(
                        acting_user=None,
                        api_key=api_key,
                        reason="manage.py create_api_token --rotate",
                    ).execute()
            api_key, secret = CreateAPIKey(
                acting_user=None,
                user=user,
                name=name,
                days=days,
                reason="manage.py create_api_token",
            ).execute()
        except ActionError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"API key {api_key.prefix}… for {username}, expires {api_key.expiry_date:%Y-%m-%d}; "
            "shown once:"
        )
        self.stdout.write(secret)
