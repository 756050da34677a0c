"""The Viewer role: reads what it is granted on (a dataset and the runs on it, an agent and its
versions and runs; everything when global) and changes nothing. Its group is made here, with the
permissions of every installed app created first (as the roles' first migration does)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations, models


def create_viewer(apps, schema_editor):
    from governance.people.roles import sync_role_groups

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_role_groups(apps)


def remove_viewer(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="Viewer").delete()


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0016_money_bounds'),
    ]

    operations = [
        migrations.AlterField(
            model_name='rolegrant',
            name='role',
            field=models.CharField(choices=[('Viewer', 'Viewer'), ('Editor', 'Editor'), ('Builder', 'Builder'), ('Publisher', 'Publisher'), ('Admin', 'Admin')], max_length=20),
        ),
        migrations.AlterField(
            model_name='ssogrouprole',
            name='role',
            field=models.CharField(choices=[('Viewer', 'Viewer'), ('Editor', 'Editor'), ('Builder', 'Builder'), ('Publisher', 'Publisher'), ('Admin', 'Admin')], max_length=20),
        ),
        migrations.RunPython(create_viewer, remove_viewer),
    ]
