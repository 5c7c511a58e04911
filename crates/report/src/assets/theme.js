(function(){try{var t=localStorage.getItem('inferlint-theme');if(t==='dark'||t==='light'){document.documentElement.setAttribute('data-theme',t);}}catch(e){}})();
