"""CreateAgent: a Builder registers a new agent."""

from agents.models import Agent
from sherlock.core.actions import Action
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.limits import DESCRIPTION_MAX, NAME_MAX, SLUG_MAX, excerpt


class CreateAgent(Action):
    """Register an agent (global Builder or Admin: a role scoped to one agent cannot create
    others). The creator becomes its owner; its versions are added with `CreateDraftVersion`."""

    noun = "agent"
    verb = "create"

    text_limits = {"slug": SLUG_MAX, "name": NAME_MAX, "description": DESCRIPTION_MAX}

    def __init__(self, *, acting_user, slug, name, description=""):
        super().__init__(acting_user=acting_user)
        self.slug = slug
        self.name = name
        self.description = description

    def check(self):
        user = self.acting_user
        if user is None or not user.is_active or not user.has_perm("agents.add_agent"):
            raise ActionDenied("You may not create agents (Builder role needed).")
        if Agent.objects.filter(slug=self.slug).exists():
            raise ActionInvalid(f"An agent with slug {excerpt(self.slug)} exists.", field="slug")

    def perform(self):
        agent = Agent.objects.create(
            slug=self.slug, name=self.name, description=self.description, owner=self.acting_user
        )
        self.audit(
            target=agent,
            after={"slug": agent.slug, "name": agent.name},
        )
        return agent
