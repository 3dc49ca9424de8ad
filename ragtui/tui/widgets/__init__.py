"""The app's widgets: question list, result lists, chunk view, metric panel."""
