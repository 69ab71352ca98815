"""Widgets of the dashboard: rankings, drill-down, chart, help screen."""
