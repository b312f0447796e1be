"""MCP server tool policies in the admin (Agents group): per allow-listed MCP server, which of its
tools wait for the user's confirmation and which for an operator's approval.

Adding one asks only for the server; its page then offers the server's tools, listed from the
server itself, as checkboxes. A server that cannot be listed says why, and keeps what was chosen.
"""
from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.urls import reverse

from .models import MCPToolPolicy
from .toolkits import mcp_server_tools


class MCPToolPolicyAddForm(forms.ModelForm):
    server = forms.ChoiceField(choices=(), help_text="An MCP server of the MCP_SERVERS allow-list.")

    class Meta:
        model = MCPToolPolicy
        fields = ("server",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        taken = set(MCPToolPolicy.objects.values_list("server", flat=True))
        self.fields["server"].choices = [(name, f"{name}: {target}") for name, target in settings.MCP_SERVERS.items() if name not in taken]


class MCPToolPolicyForm(forms.ModelForm):
    requires_confirmation_tools = forms.MultipleChoiceField(
        choices=(), required=False, widget=forms.CheckboxSelectMultiple, label="Require the user's confirmation",
        help_text="A call pauses the run; the chat shows the approval card, and the run continues once the user confirms or rejects it.",
    )
    approval_tools = forms.MultipleChoiceField(
        choices=(), required=False, widget=forms.CheckboxSelectMultiple, label="Require an operator's approval",
        help_text="A call pauses the run until an operator approves or rejects it in Approvals.",
    )

    class Meta:
        model = MCPToolPolicy
        fields = ("requires_confirmation_tools", "approval_tools")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        listed, error = mcp_server_tools(self.instance.server)
        saved = {*self.instance.requires_confirmation_tools, *self.instance.approval_tools}
        # A tool chosen before and no longer listed (or a server unreachable now) stays offered:
        # saving the page never drops a choice the operator cannot see.
        choices = [(name, f"{name}: {description}") for name, description in listed]
        choices += [(name, f"{name} (not listed by the server now)") for name in sorted(saved - {name for name, _ in listed})]
        for field in ("requires_confirmation_tools", "approval_tools"):
            self.fields[field].choices = choices
        self.listing_error = error


@admin.register(MCPToolPolicy)
class MCPToolPolicyAdmin(admin.ModelAdmin):
    list_display = ("server", "requires_confirmation_tools", "approval_tools", "updated_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = MCPToolPolicyForm if obj is not None else MCPToolPolicyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request, obj=None):
        return ("server", "requires_confirmation_tools", "approval_tools") if obj is not None else ("server",)

    def get_readonly_fields(self, request, obj=None):
        return ("server",) if obj is not None else ()

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        error = getattr(context.get("adminform") and context["adminform"].form, "listing_error", None)
        if error and request.method == "GET":
            self.message_user(request, f"The server's tools could not be listed: {error}", messages.WARNING)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    def response_add(self, request, obj, post_url_continue=None):
        """On to the new policy's page, where the server's tools are offered."""
        self.message_user(request, f"Now choose which tools of {obj.server} need confirmation or approval.")
        return HttpResponseRedirect(reverse("admin:agents_mcptoolpolicy_change", args=[obj.pk]))
