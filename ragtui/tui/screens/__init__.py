"""The app's screens: the main screen, help, full chunk view and small dialogs."""
