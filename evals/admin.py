"""Evals in the admin: eval runs (status, score, error) with a score trend per component;
datasets uploaded as JSON or CSV; a batch over a dataset started from its add page, with the
aggregate and each case's run on its page. Everything is written through evals.services."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from core.admin import OwnedModelAdmin, UserIdFilter, pretty_json
from core.components import component_list
from core.tenancy import ALL_USERS

from .models import EvalBatch, EvalDataset, EvalRun, EvalType
from .selectors import batch_runs, score_trends
from .services import BATCH_TYPES, ComponentMissing, EvalInvalid, EvalRunNotFound, batch_create, dataset_cases_parse, dataset_create


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


@admin.register(EvalRun)
class EvalRunAdmin(OwnedModelAdmin):
    list_display = ("run_id", "name", "eval_type", "component", "status", "score_shown", "error_preview", "user_id", "created_at")
    list_filter = ("eval_type", "status", "component_kind", UserIdFilter, "created_at")
    search_fields = ("run_id", "name", "agent_id", "team_id", "workflow_id", "user_id", "batch_id")
    ordering = ("-created_at",)
    date_hierarchy = "created_at"
    readonly_fields = (
        "run_id", "name", "eval_type", "component", "model_id", "model_provider", "status", "score_shown", "error", "progress_json",
        "eval_input_json", "eval_data_json", "user_id", "batch_id", "job_id", "created_at", "updated_at",
    )
    fields = readonly_fields
    change_list_template = "admin/evals/evalrun/change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:  # written by POST /eval-runs and batches
        return False

    @admin.display(description="component")
    def component(self, row: EvalRun) -> str:
        return f"{row.component_kind} {row.component_id}"

    @admin.display(description="score", ordering="score")
    def score_shown(self, row: EvalRun) -> str:
        return _score(row.score)

    @admin.display(description="error")
    def error_preview(self, row: EvalRun) -> str:
        return (row.error[:80] + "…") if len(row.error) > 80 else (row.error or "–")

    @admin.display(description="progress")
    def progress_json(self, row: EvalRun) -> str:
        return pretty_json(row.progress)

    @admin.display(description="eval input")
    def eval_input_json(self, row: EvalRun) -> str:
        return pretty_json(row.eval_input)

    @admin.display(description="eval data")
    def eval_data_json(self, row: EvalRun) -> str:
        return pretty_json(row.eval_data)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        trends = [
            {**trend, "mean_shown": _score(trend["mean"]), "recent_shown": " → ".join(_score(value) for value in trend["recent"])}
            for trend in score_trends(user=request.GET.get("user_id") or ALL_USERS)
        ]
        return super().changelist_view(request, {**(extra_context or {}), "score_trends": trends})


class DatasetForm(forms.ModelForm):
    upload = forms.FileField(
        required=False,
        help_text='JSON: a list of {"input": ..., "expected_output": ...} objects. CSV: a header row with the columns input and expected_output.',
    )
    owner = forms.CharField(required=False, max_length=255, help_text="The user id the dataset (and its batches' eval runs) belong to; empty: shared.")

    class Meta:
        model = EvalDataset
        fields = ["name", "description"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        upload = cleaned.get("upload")
        if self.instance._state.adding:
            if upload is None:
                raise forms.ValidationError("Upload the dataset's cases (JSON or CSV).")
            try:
                cleaned["cases"] = dataset_cases_parse(content=upload.read(), filename=upload.name)
            except EvalInvalid as exc:
                raise forms.ValidationError(str(exc)) from None
        return cleaned


@admin.register(EvalDataset)
class EvalDatasetAdmin(OwnedModelAdmin):
    list_display = ("name", "case_count", "user_id", "created_at")
    list_filter = (UserIdFilter, "created_at")
    search_fields = ("id", "name", "user_id")
    ordering = ("-created_at",)
    form = DatasetForm

    def get_fields(self, request: HttpRequest, obj: EvalDataset | None = None) -> list[str]:
        return ["name", "description", "owner", "upload"] if obj is None else ["id", "name", "description", "user_id", "cases_table", "run_batch"]

    def get_readonly_fields(self, request: HttpRequest, obj: EvalDataset | None = None) -> tuple[str, ...]:
        return () if obj is None else ("id", "name", "description", "user_id", "cases_table", "run_batch")

    @admin.display(description="cases")
    def case_count(self, dataset: EvalDataset) -> int:
        return len(dataset.cases or [])

    @admin.display(description="cases")
    def cases_table(self, dataset: EvalDataset) -> str:
        rows = format_html_join("", "<tr><td>{}</td><td>{}</td></tr>", ((case.get("input"), case.get("expected_output")) for case in dataset.cases or []))
        return format_html('<table class="agno-cases"><thead><tr><th>input</th><th>expected output</th></tr></thead><tbody>{}</tbody></table>', rows)

    @admin.display(description="batch")
    def run_batch(self, dataset: EvalDataset) -> str:
        url = reverse("admin:evals_evalbatch_add") + f"?dataset={dataset.pk}"
        return format_html('<a class="button" href="{}">Run as a batch</a>', url)

    def save_model(self, request: HttpRequest, obj: EvalDataset, form: DatasetForm, change: bool) -> None:
        if change:
            return
        created = dataset_create(
            owner_id=form.cleaned_data.get("owner") or None, name=form.cleaned_data["name"],
            description=form.cleaned_data.get("description") or "", cases=form.cleaned_data["cases"],
        )
        obj.pk, obj.user_id, obj.cases, obj.created_at = created.pk, created.user_id, created.cases, created.created_at
        obj._state.adding = False


def _component_choices() -> list[tuple[str, str]]:
    return [(f"{kind}:{entry.component_id}", f"{kind} {entry.component_id} ({entry.name})") for kind in ("agent", "team", "workflow") for entry in component_list(kind)]


class BatchForm(forms.ModelForm):
    dataset = forms.ModelChoiceField(queryset=EvalDataset.all_users.order_by("-created_at"), help_text="Its cases run as one eval each.")
    kind = forms.ChoiceField(label="eval type", choices=[(value, EvalType(value).label) for value in BATCH_TYPES], initial=EvalType.ACCURACY)
    component = forms.ChoiceField(choices=_component_choices)
    criteria = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="Agent as judge: what the judge scores.")
    scoring_strategy = forms.ChoiceField(choices=[("binary", "binary (pass/fail)"), ("numeric", "numeric (1-10)")], initial="binary")
    threshold = forms.IntegerField(min_value=1, max_value=10, initial=7, help_text="A case passes at this score or above (accuracy, numeric judging).")

    class Meta:
        model = EvalBatch
        fields: list[str] = []

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        kind, _, component_id = cleaned["component"].partition(":")
        options = {"threshold": cleaned["threshold"]}
        if cleaned["kind"] == EvalType.AGENT_AS_JUDGE:
            options.update(criteria=cleaned.get("criteria") or "", scoring_strategy=cleaned["scoring_strategy"])
        dataset = cleaned["dataset"]
        try:
            self.batch = batch_create(
                owner_id=dataset.user_id, dataset_id=dataset.pk, eval_type=cleaned["kind"], component_kind=kind,
                component_id=component_id, options=options,
            )
        except (EvalInvalid, ComponentMissing, EvalRunNotFound) as exc:
            raise forms.ValidationError(str(exc)) from None
        return cleaned


@admin.register(EvalBatch)
class EvalBatchAdmin(OwnedModelAdmin):
    list_display = ("dataset_name", "eval_type", "component", "status", "aggregate", "passed", "user_id", "created_at")
    list_filter = ("eval_type", "status", UserIdFilter, "created_at")
    search_fields = ("id", "dataset_name", "component_id", "user_id")
    ordering = ("-created_at",)
    form = BatchForm
    readonly = (
        "id", "dataset_name", "eval_type", "component", "status", "aggregate", "passed", "error", "options_json", "user_id",
        "created_at", "updated_at", "case_runs",
    )

    def get_fields(self, request: HttpRequest, obj: EvalBatch | None = None) -> Any:
        return ["dataset", "kind", "component", "criteria", "scoring_strategy", "threshold"] if obj is None else list(self.readonly)

    def get_readonly_fields(self, request: HttpRequest, obj: EvalBatch | None = None) -> tuple[str, ...]:
        return () if obj is None else self.readonly

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"dataset": request.GET.get("dataset")}

    @admin.display(description="component")
    def component(self, batch: EvalBatch) -> str:
        return f"{batch.component_kind} {batch.component_id}"

    @admin.display(description="aggregate score", ordering="aggregate_score")
    def aggregate(self, batch: EvalBatch) -> str:
        return _score(batch.aggregate_score)

    @admin.display(description="passed")
    def passed(self, batch: EvalBatch) -> str:
        return f"{batch.cases_passed} of {batch.cases_total}"

    @admin.display(description="options")
    def options_json(self, batch: EvalBatch) -> str:
        return pretty_json(batch.options)

    @admin.display(description="cases")
    def case_runs(self, batch: EvalBatch) -> str:
        rows = format_html_join("", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>', (
            (reverse("admin:evals_evalrun_change", args=[row.pk]), row.name or row.pk, row.eval_input.get("input", ""), row.status, _score(row.score))
            for row in batch_runs(user=batch.user_id, batch_id=batch.pk)
        ))
        return format_html('<table class="agno-cases"><thead><tr><th>run</th><th>input</th><th>status</th><th>score</th></tr></thead><tbody>{}</tbody></table>', rows)

    def save_model(self, request: HttpRequest, obj: EvalBatch, form: BatchForm, change: bool) -> None:
        if change:
            return
        created = form.batch  # written by the service when the form validated
        obj.pk, obj.user_id, obj.dataset_name, obj.component_id = created.pk, created.user_id, created.dataset_name, created.component_id
        obj._state.adding = False
